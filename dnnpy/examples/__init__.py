"""Runnable examples: ``python -m dnnpy.examples.NAME``.

The ``dnn_*`` and ``slm_*`` scripts follow dlib's C++ examples of the same names; the
``face_*`` scripts and ``cnn_face_detector`` are dlib's python_examples, run with
``import dnnpy as dlib``.

Modules:

- ``_util.py``: small helpers shared by the examples (not part of dnnpy's API)
- ``autoencoder.py``: a convolutional autoencoder: train, save, reload, draw what it does
- ``cnn_face_detector.py``: find faces with dlib's CNN (MMOD) face detector
- ``dnn_dcgan.py``: dlib's dnn_dcgan_train_ex: a DCGAN learns to draw digits
- ``dnn_face_recognition.py``: dlib's dnn_face_recognition_ex: embed faces, group them by person
- ``dnn_imagenet.py``: dlib's dnn_imagenet_ex: classify images with a trained ResNet
- ``dnn_imagenet_train.py``: dlib's dnn_imagenet_train_ex: train a ResNet-34 classifier
- ``dnn_inception.py``: dlib's dnn_inception_ex: a net of inception blocks
- ``dnn_instance_segmentation.py``: dlib's dnn_instance_segmentation_ex: run the detector and
  the per-class mask nets on images
- ``dnn_instance_segmentation_train.py``: dlib's dnn_instance_segmentation_train_ex: train an
  MMOD detector and one mask net per class
- ``dnn_introduction.py``: dlib's dnn_introduction_ex: LeNet learns handwritten digits
- ``dnn_introduction2.py``: dlib's dnn_introduction2_ex: a residual net with ``repeat``, tags
  and skips
- ``dnn_introduction3.py``: dlib's dnn_introduction3_ex: transfer learning on a pretrained
  ResNet backbone
- ``dnn_metric_learning.py``: dlib's dnn_metric_learning_ex: ``loss_metric`` maps 8-D vectors
  to 2-D points
- ``dnn_metric_learning_on_images.py``: dlib's dnn_metric_learning_on_images_ex: a ResNet
  learns to embed images of people
- ``dnn_mmod.py``: dlib's dnn_mmod_ex: train a CNN object detector with the MMOD loss
- ``dnn_mmod_dog_hipsterizer.py``: dlib's dnn_mmod_dog_hipsterizer: glasses and a moustache
  on every detected face
- ``dnn_mmod_face_detection.py``: dlib's dnn_mmod_face_detection_ex: run a trained MMOD
  face detector
- ``dnn_mmod_find_cars.py``: dlib's dnn_mmod_find_cars_ex: run the vehicle detector and look
  inside it
- ``dnn_mmod_find_cars2.py``: dlib's dnn_mmod_find_cars2_ex: one detector for the rear and the
  front ends of cars
- ``dnn_mmod_train_find_cars.py``: dlib's dnn_mmod_train_find_cars_ex: train an MMOD vehicle
  detector
- ``dnn_self_supervised_learning.py``: dlib's dnn_self_supervised_learning_ex: Barlow Twins
  learns features without labels
- ``dnn_semantic_segmentation.py``: dlib's dnn_semantic_segmentation_ex: run the trained
  segmentation net
- ``dnn_semantic_segmentation_train.py``: dlib's dnn_semantic_segmentation_train_ex: train a
  residual U-Net to label every pixel
- ``dnn_yolo_train.py``: dlib's dnn_yolo_train_ex: train a YOLOv3 detector with ``loss_yolo``
- ``face_alignment.py``: cut out every face of a photo as an aligned, upright chip
- ``face_clustering.py``: group the faces of a folder of photos by person
- ``face_detector.py``: find frontal faces with dlib's HOG face detector
- ``face_jitter.py``: the random jitters that make an averaged face descriptor more robust
- ``face_landmark_detection.py``: find faces and their 68 landmarks
- ``face_recognition.py``: a 128-number descriptor of every face in a folder of photos
- ``instance_segmentation_net.py``: the nets and helpers shared by the two instance
  segmentation examples
- ``random_cropper.py``: dlib's random_cropper_ex: what ``random_cropper`` makes of a
  detection data set
- ``semantic_segmentation_net.py``: the segmentation net shared by the two semantic
  segmentation examples
- ``slm_advanced_train.py``: dlib's slm_advanced_train_ex: a transformer memorises a text
  and regenerates it
- ``slm_basic_train.py``: dlib's slm_basic_train_ex: a very small character-level
  transformer language model
"""
